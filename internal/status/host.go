package status

import (
	"net"
	"net/http"
	"strings"
)

// loopbackHosts refuses, on a server listening on a loopback address only, a request whose Host
// names anything but a loopback address or localhost: a page of another site whose name was
// made to resolve to 127.0.0.1 (DNS rebinding) would otherwise be same-origin with the server
// and read its documents and run output. A server listening on other addresses is reached by
// names this one cannot know, and is left as it is.
func loopbackHosts(ln net.Addr, h http.Handler) http.Handler {
	tcp, ok := ln.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "this server answers only requests addressed to localhost or a loopback address", http.StatusMisdirectedRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackHost reports whether a Host header names localhost or a loopback address. An empty
// one (an HTTP/1.0 probe's) is no browser's, and passes.
func loopbackHost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") || strings.EqualFold(host, "localhost.") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
