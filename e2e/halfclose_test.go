package e2e

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// halfCloseSpeed puts the catalogue's health faults a second or two of wall time into the
// run; the client leaves long before a blocked handler could answer.
const halfCloseSpeed = 20

// A client that half-closes its write side while its health check is held must get no
// answer: net/http's default for a handler that returns without writing is 200 with an empty
// body, which is exactly a healthy SGLang /health, a verdict the fake would have invented.
var _ = Describe("a client that half-closes during a hung health check", Label("inprocess"), func() {
	DescribeTable("gets no 200, and the journal records the request abandoned",
		func(ctx SpecContext, scenario, armedBy, fault string) {
			s, err := scenarios.Resolve(scenario)
			Expect(err).NotTo(HaveOccurred())
			c, err := scenarios.Compile(s, 1)
			Expect(err).NotTo(HaveOccurred())
			cfg := fakeserver.FromCompiled(c)
			cfg.Args.Host, cfg.Args.Port = "127.0.0.1", 0
			cfg.Clock = replay.Scaled(c.Timeline.Start, halfCloseSpeed)
			cfg.Journal = new(bytes.Buffer)
			srv, err := fakeserver.Start(ctx, cfg)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) error { return srv.Stop(ctx) })

			// The fault holds health checks from the state that arms it on.
			Eventually(func(g Gomega) {
				g.Expect(must(srv.Journal(ctx))).To(ContainElement(And(
					HaveField("Type", fakeserver.RecState), HaveField("State", armedBy))))
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())

			conn, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.BaseURL(), "http://"), 5*time.Second)
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			Expect(conn.SetDeadline(time.Now().Add(10 * time.Second))).To(Succeed())
			_, err = io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: fake\r\n\r\n")
			Expect(err).NotTo(HaveOccurred())
			Expect(conn.(*net.TCPConn).CloseWrite()).To(Succeed())

			got, err := io.ReadAll(conn)
			var ne net.Error
			Expect(errors.As(err, &ne) && ne.Timeout()).To(BeFalse(), "the connection was neither answered nor closed (read %q)", got)
			Expect(string(got)).To(BeEmpty(), "a client that left got an answer the scenario never decided")
			if err != nil {
				Expect(err).To(MatchError(syscall.ECONNRESET), "read: want EOF or a reset")
			}

			// One record of the request, with no status: abandoned under the fault that held it.
			Eventually(func(g Gomega) {
				var health []fakeserver.Record
				for _, r := range fakeserver.Requests(must(srv.Journal(ctx))) {
					if r.Route == "/health" && !r.Internal {
						health = append(health, r)
					}
				}
				g.Expect(health).To(HaveLen(1))
				g.Expect(health[0].Status).To(BeZero(), "journal: %+v", health[0])
				g.Expect(health[0].Outcome).To(Equal("abandoned"), "journal: %+v", health[0])
				g.Expect(health[0].Fault).To(Equal(fault), "journal: %+v", health[0])
			}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
		},
		Entry("a slow health check (s13b, 24 s per /health once ready)", SpecTimeout(time.Minute), "s13b-slow-health-25s", fakeserver.StateReady, "slow_health"),
		Entry("a hung server (s3-hang, wedged once bound)", SpecTimeout(time.Minute), "s3-hang", fakeserver.StateWedged, "wedge"),
	)
})
