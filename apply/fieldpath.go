package apply

import (
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Field paths: RFC 6901 JSON pointers (spec.ignoreDifferences) turned into the
// structured-merge-diff paths of managedFields, and those paths looked up, removed
// and set in an object's content.

// pointerPath turns an RFC 6901 pointer into a field path, resolving list indexes
// against the first of objs that has the list: an element with a name becomes
// [name="..."] (how managedFields names it), others keep their index.
func pointerPath(ptr string, objs ...map[string]any) (fieldpath.Path, bool) {
	if ptr == "" || !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	tokens := strings.Split(ptr[1:], "/")
	var path fieldpath.Path
	cur := make([]any, len(objs))
	for i, o := range objs {
		cur[i] = o
	}
	for _, raw := range tokens {
		tok := strings.ReplaceAll(strings.ReplaceAll(raw, "~1", "/"), "~0", "~")
		pe, ok := elementFor(tok, cur)
		if !ok {
			return nil, false
		}
		path = append(path, pe)
		for i := range cur {
			cur[i], _ = lookupElement(cur[i], pe)
		}
	}
	return path, len(path) > 0
}

// elementFor names token as a path element given the containers it may index.
func elementFor(tok string, containers []any) (fieldpath.PathElement, bool) {
	for _, c := range containers {
		list, ok := c.([]any)
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(tok)
		if err != nil || idx < 0 || idx >= len(list) {
			return fieldpath.PathElement{}, false
		}
		if m, ok := list[idx].(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				return fieldpath.KeyElementByFields("name", name), true
			}
		}
		return fieldpath.IndexElement(idx), true
	}
	return fieldpath.FieldNameElement(tok), true
}

// lookupElement returns the child of container that pe selects.
func lookupElement(container any, pe fieldpath.PathElement) (any, bool) {
	switch c := container.(type) {
	case map[string]any:
		if pe.FieldName == nil {
			return nil, false
		}
		v, ok := c[*pe.FieldName]
		return v, ok
	case []any:
		if i := indexOf(c, pe); i >= 0 {
			return c[i], true
		}
	}
	return nil, false
}

// indexOf finds the element of list that pe selects, or -1.
func indexOf(list []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index < len(list) {
			return *pe.Index
		}
	case pe.Key != nil:
		for i, el := range list {
			m, ok := el.(map[string]any)
			if ok && keyMatches(m, *pe.Key) {
				return i
			}
		}
	case pe.Value != nil:
		for i, el := range list {
			if value.Equals(value.NewValueInterface(el), *pe.Value) {
				return i
			}
		}
	}
	return -1
}

func keyMatches(m map[string]any, key value.FieldList) bool {
	for _, f := range key {
		v, ok := m[f.Name]
		if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}

// lookupPath returns the value at p in obj.
func lookupPath(obj map[string]any, p fieldpath.Path) (any, bool) {
	var cur any = obj
	for _, pe := range p {
		next, ok := lookupElement(cur, pe)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// removePath deletes the field at p from obj, if it is there.
func removePath(obj map[string]any, p fieldpath.Path) {
	if len(p) == 0 {
		return
	}
	parent, ok := lookupPath(obj, p[:len(p)-1])
	if !ok {
		return
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		if last.FieldName != nil {
			delete(c, *last.FieldName)
		}
	case []any:
		if i := indexOf(c, last); i >= 0 {
			setPath(obj, p[:len(p)-1], append(c[:i:i], c[i+1:]...))
		}
	}
}

// setPath sets the field at p in obj to v, when its parent exists; it reports
// whether it did.
func setPath(obj map[string]any, p fieldpath.Path, v any) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := lookupPath(obj, p[:len(p)-1])
	if !ok {
		return false
	}
	last := p[len(p)-1]
	switch c := parent.(type) {
	case map[string]any:
		if last.FieldName != nil {
			c[*last.FieldName] = v
			return true
		}
	case []any:
		if i := indexOf(c, last); i >= 0 {
			c[i] = v
			return true
		}
	}
	return false
}

// pointerOf writes p as a JSON pointer into obj, list elements by their index.
func pointerOf(obj map[string]any, p fieldpath.Path) (string, bool) {
	var b strings.Builder
	var cur any = obj
	for _, pe := range p {
		switch c := cur.(type) {
		case map[string]any:
			if pe.FieldName == nil {
				return "", false
			}
			b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(*pe.FieldName, "~", "~0"), "/", "~1"))
		case []any:
			i := indexOf(c, pe)
			if i < 0 {
				return "", false
			}
			b.WriteString("/" + strconv.Itoa(i))
		default:
			return "", false
		}
		var ok bool
		if cur, ok = lookupElement(cur, pe); !ok {
			return "", false
		}
	}
	return b.String(), true
}
