// Command bare is the yardstick for the hook's HTTP figures in BENCHMARKS.md:
// the least a Go net/http server can do for one hook request. It reads the
// whole request body and answers a fixed file (the bytes the real hook
// answered to that request) as application/json, on every path.
//
//	go run ./bench/bare -listen 127.0.0.1:18090 -response answer.json
package main

import (
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18090", "address to serve on")
	respFile := flag.String("response", "", "file whose bytes are the answer to every request")
	flag.Parse()
	answer, err := os.ReadFile(*respFile)
	if err != nil {
		log.Fatal(err)
	}
	length := strconv.Itoa(len(answer))
	srv := &http.Server{
		Addr: *listen,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read the body as the hook does, so both pay for receiving it.
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", length)
			_, _ = w.Write(answer)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}
