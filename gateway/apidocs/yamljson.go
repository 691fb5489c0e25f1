package apidocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"gopkg.in/yaml.v3"
)

// jsonNumber is the JSON grammar of a number (RFC 8259, section 6).
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)

// yamlToJSON converts a YAML document to JSON keeping the order of mapping
// keys and the exact text of numbers: the document's money examples
// (1500.00) must not become 1500 by passing through float64, as a generic
// YAML-to-JSON conversion would do.
func yamlToJSON(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeNode(&buf, &doc, 0); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func writeNode(buf *bytes.Buffer, n *yaml.Node, depth int) error {
	if depth > 100 {
		return errors.New("yaml: nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return errors.New("yaml: want exactly one document")
		}
		return writeNode(buf, n.Content[0], depth+1)
	case yaml.AliasNode:
		return writeNode(buf, n.Alias, depth+1)
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNode(buf, c, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	case yaml.MappingNode:
		buf.WriteByte('{')
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
				return fmt.Errorf("yaml line %d: only plain keys are supported", k.Line)
			}
			if seen[k.Value] {
				return fmt.Errorf("yaml line %d: duplicate key %q", k.Line, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k.Value)
			buf.WriteByte(':')
			if err := writeNode(buf, v, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
		return nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			buf.WriteString("null")
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return err
			}
			fmt.Fprint(buf, b)
		case "!!int", "!!float":
			if !jsonNumber.MatchString(n.Value) {
				return fmt.Errorf("yaml line %d: number %q has no JSON form; quote it", n.Line, n.Value)
			}
			buf.WriteString(n.Value)
		default:
			writeString(buf, n.Value)
		}
		return nil
	}
	return fmt.Errorf("yaml line %d: unsupported node", n.Line)
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}
