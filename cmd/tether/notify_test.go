package main

import (
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNotifyFlags(t *testing.T) {
	f, err := parseControllerFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !f.notify.enabled || f.notify.allowedHosts != nil {
		t.Errorf("defaults: %+v, want notifications on to any host", f.notify)
	}
	f, err = parseControllerFlags([]string{"--notifications=false", "--notify-allowed-hosts", "hooks.slack.com, *.corp.example"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"hooks.slack.com", "*.corp.example"}, f.notify.allowedHosts); diff != "" || f.notify.enabled {
		t.Errorf("enabled %v; allowed hosts (-want +got):\n%s", f.notify.enabled, diff)
	}
}
