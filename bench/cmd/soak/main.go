// Command soak sends n requests, mixed over the fake server's routes, from c keep-alive
// connections on loopback, and prints the server's RSS after the first early requests and at
// the end. It exits 1 when the end RSS exceeds -max-ratio times the early RSS or a request
// went unanswered, and stops after -max whatever the count.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incident-replay/incident-replay/internal/proc"
)

type route struct {
	method, path, body string
}

// mix is the request sequence each connection cycles through: health, info, OpenAI and
// native generation, metrics, and an unknown route.
var mix = []route{
	{"GET", "/health", ""},
	{"GET", "/health_generate", ""},
	{"GET", "/ping", ""},
	{"GET", "/v1/models", ""},
	{"GET", "/get_model_info", ""},
	{"GET", "/get_server_info", ""},
	{"GET", "/metrics", ""},
	{"POST", "/generate", `{"text":"soak","sampling_params":{"max_new_tokens":2}}`},
	{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"soak"}],"max_tokens":2}`},
	{"POST", "/v1/completions", `{"model":"m","prompt":"soak","max_tokens":2}`},
	{"GET", "/v1/models", ""},
	{"GET", "/health", ""},
	{"GET", "/no_such_route", ""},
}

func rssKB(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	v := proc.StatusValue(b, "VmRSS")
	if v == nil {
		return 0, errors.New("no VmRSS line")
	}
	return strconv.Atoi(strings.TrimSuffix(string(v), " kB"))
}

func main() {
	base := flag.String("url", "", "server base URL, http://127.0.0.1:PORT")
	pid := flag.Int("pid", 0, "the server's process id (its RSS is read from /proc)")
	n := flag.Int64("n", 2_000_000, "requests in all")
	c := flag.Int("c", 64, "connections")
	early := flag.Int64("early", 10_000, "requests after which the early RSS is read")
	maxWall := flag.Duration("max", 10*time.Minute, "stop after this long whatever the count")
	maxRatio := flag.Float64("max-ratio", 1.5, "largest acceptable end/early RSS ratio")
	flag.Parse()
	u, err := url.Parse(*base)
	if err != nil || u.Scheme != "http" || (u.Hostname() != "127.0.0.1" && u.Hostname() != "::1") ||
		*pid <= 0 || *n < *early || *early < 1 || *c < 1 || *maxWall <= 0 {
		fmt.Fprintln(os.Stderr, "soak: give -url http://127.0.0.1:PORT, -pid of the server, -n >= -early >= 1, -c >= 1 and -max > 0")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *maxWall)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: *c, MaxConnsPerHost: *c, Proxy: nil}
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var next, done, failed atomic.Int64
	var earlyRSS atomic.Int64
	begin := time.Now()
	var wg sync.WaitGroup
	for range *c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= *n {
					return
				}
				rt := mix[i%int64(len(mix))]
				req, _ := http.NewRequestWithContext(ctx, rt.method, *base+rt.path, strings.NewReader(rt.body))
				if rt.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := cl.Do(req)
				if err != nil {
					failed.Add(1)
				} else {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if done.Add(1) == *early {
					kb, err := rssKB(*pid)
					if err != nil {
						fmt.Fprintln(os.Stderr, "soak: read RSS:", err)
					}
					earlyRSS.Store(int64(kb))
				}
			}
		}()
	}
	wg.Wait()
	tr.CloseIdleConnections()
	wall := time.Since(begin)
	end, err := rssKB(*pid)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: read RSS at the end (did the server die?):", err)
		os.Exit(1)
	}
	e := earlyRSS.Load()
	fmt.Printf("requests: %d sent, %d failed, %d connections, %.1f s, %.0f req/s\n", done.Load(), failed.Load(), *c, wall.Seconds(), float64(done.Load())/wall.Seconds())
	fmt.Printf("RSS after %d requests: %.1f MB\n", *early, float64(e)/1024)
	fmt.Printf("RSS at the end:          %.1f MB\n", float64(end)/1024)
	if e == 0 {
		fmt.Println("FAIL: the early RSS was never read")
		os.Exit(1)
	}
	ratio := float64(end) / float64(e)
	fmt.Printf("ratio end/early: %.2f (acceptance <= %.2f)\n", ratio, *maxRatio)
	switch {
	case done.Load() < *n:
		fmt.Printf("FAIL: stopped after %d of %d requests (-max %v)\n", done.Load(), *n, *maxWall)
		os.Exit(1)
	case failed.Load() > 0:
		fmt.Printf("FAIL: %d requests got no answer\n", failed.Load())
		os.Exit(1)
	case ratio > *maxRatio:
		fmt.Println("FAIL: RSS grew")
		os.Exit(1)
	}
	fmt.Println("PASS")
}
