package source

import "context"

// tenantKey is the context key of the tenant that asks for a render.
type tenantKey struct{}

// WithTenant returns ctx naming tenant (a Sync's namespace) as who asks for the
// renders made with it: the render cache's budget is shared fairly between
// tenants (see renderCache), as Request.Tenant shares the git cache and hosts
// for a Fetch. A render asked for without a tenant counts to the tenant "".
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantOf is the tenant ctx names (WithTenant), or "".
func TenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}
