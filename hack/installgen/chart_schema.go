package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// chartSchema is the chart's values.schema.json: every value chartValues holds
// and no other, so that Helm (and Tether rendering the chart from git) refuses
// a misspelt key instead of ignoring it, and each value's type.
func chartSchema() map[string]any {
	object := map[string]any{"type": "object"}
	strings := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	objects := map[string]any{"type": "array", "items": object}
	closed := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	}
	boolean := map[string]any{"type": "boolean"}
	switched := closed(map[string]any{"enabled": boolean})
	return map[string]any{
		"$schema":              "http://json-schema.org/draft-07/schema#",
		"title":                "Values of Tether's chart (docs/install.md lists them)",
		"type":                 "object",
		"additionalProperties": false,
		"properties": map[string]any{
			"image": closed(map[string]any{
				"repository": map[string]any{"type": "string", "minLength": 1},
				"tag":        map[string]any{"type": "string"},
				"digest":     map[string]any{"type": "string", "pattern": "^(sha256:[0-9a-f]{64})?$"},
			}),
			"replicaCount":              map[string]any{"type": "integer", "minimum": 0},
			"resources":                 closed(map[string]any{"limits": strings, "requests": strings, "claims": objects}),
			"nodeSelector":              strings,
			"tolerations":               objects,
			"affinity":                  object,
			"topologySpreadConstraints": objects,
			"priorityClassName":         map[string]any{"type": "string"},
			"podAnnotations":            strings,
			"serviceAccount":            closed(map[string]any{"annotations": strings}),
			"extraArgs":                 map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"extraEnv": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []string{"name"},
				"properties": map[string]any{"name": map[string]any{"type": "string", "minLength": 1}},
			}},
			"namespaced": closed(map[string]any{
				"enabled": boolean,
				// Namespaces: DNS labels.
				"tenants": map[string]any{"type": "array", "uniqueItems": true, "items": map[string]any{
					"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
				}},
			}),
			"ui": switched,
			"monitoring": closed(map[string]any{
				"serviceMonitor": switched, "prometheusRule": switched, "dashboard": switched, "labels": strings,
			}),
		},
	}
}

// writeSchema writes values.schema.json into the chart at dir (JSON has no
// comments: the file is not headed as generated; make verify catches an edit).
func writeSchema(dir string) error {
	body, err := json.MarshalIndent(chartSchema(), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "values.schema.json"), append(body, '\n'), 0o644) //nolint:gosec // a chart meant to be published
}
