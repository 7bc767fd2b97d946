package apply

import (
	"strings"
	"testing"
)

// TestTypeErrorsInUserTerms: the API server's answer to a field of the wrong
// type reaches the user (CLI, conditions, Events, UI) in YAML's words, without
// Go's internal value, nor the value itself.
func TestTypeErrorsInUserTerms(t *testing.T) {
	for in, want := range map[string]string{
		`.data.key: expected string, got &value.valueUnstructured{Value:[]interface {}{1, 2}}`:                                                                                           `.data.key: expected string, got a list`,
		`.spec.replicas: expected numeric (int or float), got &value.valueUnstructured{Value:"three"}`:                                                                                   `.spec.replicas: expected numeric (int or float), got a string`,
		`.data: expected map, got &value.valueUnstructured{Value:map[string]interface {}{"a":map[string]interface {}{}}}; .b: expected string, got &value.valueUnstructured{Value:true}`: `.data: expected map, got a map; .b: expected string, got a boolean`,
		`.x: expected string, got &value.valueUnstructured{Value:12.5}`:                                                                                                                  `.x: expected string, got a number`,
		`.x: expected string, got &value.valueUnstructured{Value:[]interface {}{` /* cut short */ :                                                                                       `.x: expected string, got a value of another type`,
		`no Go value here`: `no Go value here`,
	} {
		if got := inUserTerms(in); got != want {
			t.Errorf("inUserTerms(%q)\n = %q\nwant %q", in, got, want)
		}
		if strings.Contains(inUserTerms(in), "three") {
			t.Errorf("the value itself leaks: %q", inUserTerms(in))
		}
	}
}
