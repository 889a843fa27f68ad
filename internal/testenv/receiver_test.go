package testenv

import (
	"context"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestReceiver(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	post := func(t *testing.T, url, key string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	tests := []struct {
		name     string
		status   int
		text     string
		wantBody string
	}{
		{"Accepts", http.StatusOK, "", ""},
		{"Refuses", http.StatusConflict, "newer token seen", "newer token seen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := MustReceiver(t, tt.status, tt.text)
			for _, key := range []string{"a", "b", "a"} {
				if code, body := post(t, r.URL+"/hook", key); code != tt.status || body != tt.wantBody {
					t.Fatalf("answer = %d %q, want %d %q", code, body, tt.status, tt.wantBody)
				}
			}
			keys := r.Keys()
			if want := map[string]int{"a": 2, "b": 1}; !maps.Equal(keys, want) {
				t.Fatalf("Keys() = %v, want %v", keys, want)
			}
			keys["a"] = 0
			if r.Keys()["a"] != 2 {
				t.Fatal("Keys() returned the receiver's own map")
			}
		})
	}
}
