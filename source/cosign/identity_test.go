package cosign

import "testing"

func TestParseRepository(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{in: "ghcr.io/org/app", want: "ghcr.io/org/app"},
		{in: "localhost:5000/app", want: "localhost:5000/app"},
		{in: "docker.io/library/nginx", want: "index.docker.io/library/nginx"},
		{in: "docker.io/nginx", want: "index.docker.io/library/nginx"},
		{in: "index.docker.io/library/nginx", want: "index.docker.io/library/nginx"},
		{in: "nginx", want: "index.docker.io/library/nginx"},
		{in: "org/app", want: "index.docker.io/org/app"},
	}
	for _, tt := range tests {
		got, err := parseRepository(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("parseRepository(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "ghcr.io/", "ghcr.io//app", "ghcr.io/Org/app", "ghcr.io/org/app app", "host:/app", "h\x00st.io/app"} {
		if got, err := parseRepository(bad); err == nil {
			t.Errorf("parseRepository(%q) = %v, want an error", bad, got)
		}
	}
}
