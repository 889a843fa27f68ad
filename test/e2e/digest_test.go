package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// digestLines is how many lines of a replica's log a failed test prints.
const digestLines = 150

// digestMsgs are the info lines that tell a term's and a run's story; with every warning and
// error they are what a failed scenario needs to be explained from its output alone, when the
// last lines of a log are usually only the shutdown.
var digestMsgs = map[string]bool{
	"campaign won": true, "leading": true, "stopped leading": true, "leadership ended": true,
	"run taken over": true, "run interrupted; the next leader takes it over": true,
}

// digest returns the warnings, errors and lifecycle lines of the log at path, the last
// digestLines of them, each cut to 400 characters.
func digest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", path, err)
	}
	defer f.Close()
	var keep []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var e logEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Level == "info" && !digestMsgs[e.Msg] {
			continue
		}
		if len(line) > 400 {
			line = line[:400] + "…"
		}
		keep = append(keep, line)
	}
	if len(keep) > digestLines {
		keep = keep[len(keep)-digestLines:]
	}
	return strings.Join(keep, "\n")
}
