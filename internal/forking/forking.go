// Package forking keeps a test's process starting children, as the harness does while its
// runs start tools: a child forked while a socket is open holds that socket until its exec.
package forking

import (
	"os/exec"
	"sync"
	"testing"
)

// Start runs n goroutines that run /bin/true over and over until the test ends, and returns
// once the first child has run.
func Start(t testing.TB, n int) {
	t.Helper()
	if _, err := exec.LookPath("/bin/true"); err != nil {
		t.Fatalf("no /bin/true to fork: %v", err)
	}
	stop := make(chan struct{})
	ran := make(chan struct{}, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("/bin/true").Run()
				select {
				case ran <- struct{}{}:
				default:
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
	<-ran
}
