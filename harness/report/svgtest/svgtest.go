// Package svgtest reads the report's SVG back as a plain element tree, for tests that check
// where things were drawn.
package svgtest

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// Node is one SVG element with its attributes, children and text.
type Node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []Node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

// Parse reads a whole SVG document.
func Parse(b []byte) (Node, error) {
	var n Node
	if err := xml.Unmarshal(b, &n); err != nil {
		return Node{}, fmt.Errorf("not well-formed SVG: %w", err)
	}
	return n, nil
}

// Attr is the value of the attribute with this local name, or "".
func (n Node) Attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// Float parses a numeric attribute.
func (n Node) Float(name string) (float64, error) {
	f, err := strconv.ParseFloat(n.Attr(name), 64)
	if err != nil {
		return 0, fmt.Errorf("<%s> %s=%q: %w", n.XMLName.Local, name, n.Attr(name), err)
	}
	return f, nil
}

// HasClass reports whether the class list holds c.
func (n Node) HasClass(c string) bool {
	return strings.Contains(" "+n.Attr("class")+" ", " "+c+" ")
}

// Find returns every descendant whose class list holds c, in document order.
func (n Node) Find(c string) []Node {
	var out []Node
	for _, k := range n.Nodes {
		if k.HasClass(c) {
			out = append(out, k)
		}
		out = append(out, k.Find(c)...)
	}
	return out
}
