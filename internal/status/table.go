package status

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"
)

// TableDoc is the /table document: the job table a replica runs now, as a command needs it to
// show the cluster's view rather than its own file's. It holds no run, fence or pause, so it
// stays cheap to serve at the largest table (it reads neither the coordinator nor the store).
type TableDoc struct {
	Jobs []TableJob `json:"jobs"`
}

// TableJob is one job of a TableDoc.
type TableJob struct {
	Name     string     `json:"name"`
	Schedule string     `json:"schedule"`
	Timezone string     `json:"timezone"`
	Enabled  bool       `json:"enabled"`
	Next     *time.Time `json:"next"`   // null for a disabled job or a schedule without future slots
	Digest   string     `json:"digest"` // see Entry.Digest
}

// TableJobs is table at now as a TableDoc lists it.
func TableJobs(table []Entry, now time.Time) []TableJob {
	out := make([]TableJob, len(table))
	for i, j := range table {
		out[i] = TableJob{Name: j.Name, Schedule: j.Schedule, Timezone: j.Timezone, Enabled: j.Enabled, Digest: j.Digest}
		if j.Next != nil && j.Enabled {
			if at := j.Next(now); !at.IsZero() {
				at = at.UTC()
				out[i].Next = &at
			}
		}
	}
	return out
}

// table serves the TableDoc of the daemon's table, unindented: at a hundred thousand jobs the
// indentation alone would be a sizeable part of it.
func (s *Server) table(w http.ResponseWriter, _ *http.Request) {
	doc := TableDoc{Jobs: TableJobs(s.d.Table(), s.cfg.Now())}
	w.Header().Set("Content-Type", "application/json")
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := json.NewEncoder(bw).Encode(doc); err == nil {
		_ = bw.Flush()
	}
}
