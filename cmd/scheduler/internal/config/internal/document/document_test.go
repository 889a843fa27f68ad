package document

import (
	"fmt"
	"strings"
	"testing"
)

// TestParse_RefusesTooManyValues: a file within the byte limit whose values would cost the
// parser gigabytes (a dense list) is refused before it is parsed, with the count and the bound;
// a file of many jobs on lines of their own is not.
func TestParse_RefusesTooManyValues(t *testing.T) {
	dense := "x: [" + strings.Repeat("1,", MaxNodes) + "1]\n"
	if doc, problems := Parse([]byte(dense)); doc != nil || len(problems) != 1 || !strings.Contains(problems[0], fmt.Sprint(MaxNodes)) {
		t.Fatalf("dense list: doc %T, problems %v", doc, problems)
	}
	var sb strings.Builder
	sb.WriteString("jobs:\n")
	for i := range 20000 {
		fmt.Fprintf(&sb, "  - {name: job%d, schedule: \"0 0 2 * * *\", type: exec, command: [\"/bin/true\"], timeout: 10s}\n", i)
	}
	if _, problems := Parse([]byte(sb.String())); len(problems) != 0 {
		t.Fatalf("a table of 20,000 jobs: %v", problems)
	}
}
