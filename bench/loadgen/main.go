// Command loadgen drives one URL with c keep-alive clients for d and prints requests/s and the
// latency percentiles of the answered requests.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	url := flag.String("url", "", "URL to GET")
	c := flag.Int("c", 16, "concurrent clients")
	d := flag.Duration("d", 5*time.Second, "duration")
	flag.Parse()
	if *url == "" || *c < 1 || *d <= 0 {
		fmt.Fprintln(os.Stderr, "loadgen: give -url, -c >= 1 and -d > 0")
		os.Exit(2)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *c}
	cl := &http.Client{Transport: tr}
	var ok, bad atomic.Int64
	stop := time.Now().Add(*d)
	var wg sync.WaitGroup
	lat := make([][]time.Duration, *c)
	for i := 0; i < *c; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				t0 := time.Now()
				resp, err := cl.Get(*url)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
					lat[i] = append(lat[i], time.Since(t0))
				} else {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) time.Duration {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))]
	}
	fmt.Printf("%d ok, %d failed, %.0f req/s, p50 %v, p99 %v\n", ok.Load(), bad.Load(), float64(ok.Load())/d.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
}
