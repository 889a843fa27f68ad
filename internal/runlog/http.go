package runlog

import (
	"net/http"
	"strconv"
)

// ServeHTTP serves GET /runs/{id}/output: the run's output from ?from=N on, streamed as the
// run prints it, until its attempt ends or the request is cancelled. 404 for a run not kept.
func (b *Book) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	from := int64(0)
	if v := r.URL.Query().Get("from"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			http.Error(w, "from: want a byte offset", http.StatusBadRequest)
			return
		}
		from = n
	}
	c, ok := b.Read(id, from)
	if !ok {
		http.Error(w, "no run "+strconv.Quote(id)+" in progress on this replica", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Output-Offset", strconv.FormatInt(c.Offset, 10))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for {
		if len(c.Data) > 0 {
			if _, err := w.Write(c.Data); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if c.Ended {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-c.Changed:
		}
		next := c.Offset + int64(len(c.Data))
		if c, ok = b.Read(id, next); !ok {
			return
		}
	}
}
