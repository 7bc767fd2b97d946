package cosign

import "testing"

func TestParseReference(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{in: "ghcr.io/org/app", want: "ghcr.io/org/app"},
		{in: "ghcr.io/org/app:v1", want: "ghcr.io/org/app"},
		{in: "ghcr.io/org/app@sha256:97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36", want: "ghcr.io/org/app"},
		{in: "ghcr.io/org/app:v1@sha256:97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36", want: "ghcr.io/org/app"},
		{in: "localhost:5000/app", want: "localhost:5000/app"},
		{in: "localhost:5000/app:v1", want: "localhost:5000/app"},
		{in: "docker.io/library/nginx", want: "index.docker.io/library/nginx"},
		{in: "docker.io/nginx", want: "index.docker.io/library/nginx"},
		{in: "index.docker.io/library/nginx", want: "index.docker.io/library/nginx"},
		{in: "nginx", want: "index.docker.io/library/nginx"},
		{in: "org/app", want: "index.docker.io/org/app"},
	}
	for _, tt := range tests {
		got, err := parseReference(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("parseReference(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ghcr.io/", "ghcr.io//app", "ghcr.io/Org/app", "ghcr.io/org/app app", "host:/app", "h\x00st.io/app"} {
		if got, err := parseReference(bad); err == nil {
			t.Errorf("parseReference(%q) = %v, want an error", bad, got)
		}
	}
}

func TestRepositoryEqual(t *testing.T) {
	a, _ := parseRepository("Registry.Example.com/team/app")
	b, _ := parseRepository("registry.example.com/team/app")
	c, _ := parseRepository("registry.example.com/team/App2")
	if !a.equal(b) {
		t.Error("hosts differing in case are not equal")
	}
	if c.path != "" {
		t.Errorf("an upper-case path was read: %v", c)
	}
}
