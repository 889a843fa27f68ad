// Package document parses a configuration file into the tree of values the configuration is
// decoded from, refusing what a parser would otherwise drop or take in silence: a second
// document, a tag no value of the configuration has.
package document

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Empty is the refusal of a file that sets nothing. Taken as it is, such a file
// (one truncated by a writer that has not finished, read by a reload) would stop every job
// with nothing said above info.
const Empty = "the file holds no settings (it is empty, or comments only): " +
	"for a table without jobs write `jobs: []`"

// coreTags are the YAML tags a value may carry explicitly: those of the values the
// configuration is made of. Any other tag (`!!binary`, `!!python/...`, `!local`) is
// refused rather than read as the plain string the parser falls back to.
var coreTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true,
	"!!map": true, "!!seq": true, "!!merge": true,
}

// Parse is the one parse of the configuration file, by yaml.v3: it names the line of
// a syntax error and, as it decodes, rejects duplicate keys (which viper would let the last
// one win) and aliases that expand past its bound. The file must hold exactly one document
// that sets something, with no tags but the core ones: a second document (files put
// together, a `---` too many) would otherwise be dropped without a word. The document is nil
// for a file that sets nothing, which the caller refuses (Empty) beside whatever else
// it finds.
func Parse(data []byte) (any, []string) {
	if n := roughNodes(data); n > MaxNodes {
		return nil, []string{fmt.Sprintf("the file holds about %d values, more than %d: a table of the most jobs a configuration may hold "+
			"needs far fewer, and parsing it would take gigabytes (a file generated wrong, or a runaway list)", n, MaxNodes)}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, []string{yamlMessage(err)}
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, []string{yamlMessage(err)}
		}
		if !emptyNode(&next) {
			return nil, []string{fmt.Sprintf("line %d: a second YAML document begins here: the file must hold one document (remove the `---` or put the settings together)", next.Line)}
		}
	}
	if problems := checkTags(&root); len(problems) > 0 {
		return nil, problems
	}
	var doc any
	if err := root.Decode(&doc); err != nil {
		return nil, []string{yamlMessage(err)}
	}
	return doc, nil
}

// MaxNodes bounds the values (mappings, lists, keys and scalars) of a configuration file. Its byte
// limit does not bound the parse's memory: a parser's tree costs a few hundred bytes per value,
// and a dense file (`[1,1,1,...]`) holds a value every two bytes. A table of the most jobs a
// configuration may hold, each with its usual keys, holds a small part of this.
const MaxNodes = 3_000_000

// roughNodes counts, from above, the values of a YAML text without parsing it: every line and
// every separator of a flow list or mapping may begin one.
func roughNodes(data []byte) int {
	n := 0
	for _, c := range data {
		switch c {
		case '\n', ',', '[', '{', ':':
			n++
		}
	}
	return n
}

// emptyNode reports whether a document sets nothing: no content, or a null alone, such as a
// `---` at the end of the file.
func emptyNode(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	return n.Kind == 0 || n.Kind == yaml.DocumentNode && len(n.Content) == 0 ||
		n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && n.Style&yaml.TaggedStyle == 0
}

// checkTags reports every node of the tree under n that carries a tag not in coreTags.
func checkTags(n *yaml.Node) []string {
	var problems []string
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Style&yaml.TaggedStyle != 0 && !coreTags[n.ShortTag()] {
			problems = append(problems, fmt.Sprintf("line %d: the tag %.80q is not supported: write the value without it", n.Line, n.Tag))
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
	return problems
}

// yamlMessage is a parser's error without the package's prefix.
func yamlMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}
