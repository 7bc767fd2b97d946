package source

import yamlcount "tether.dev/tether/source/render"

// yamlNodeBound is the bound of data's YAML nodes from its text alone
// (render.YAMLNodeBound).
func yamlNodeBound(data []byte) int { return yamlcount.YAMLNodeBound(data) }
