package replay_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
)

// A captured log becomes a timeline, which a Player writes back out on a clock. A Manual
// clock set past the end emits everything at once; Scaled(tl.Start, 60) would take the
// log's real span divided by 60.
func ExampleFromLogReader() {
	const log = `[2025-06-14 08:12:01] Load weight begin. avail mem=78.20 GB
INFO:     Started server process [4242]
[2025-06-14 08:12:40] The server is fired up and ready to roll!
`
	tl, err := replay.FromLogReader(strings.NewReader(log))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("span:", tl.Duration())
	c := replay.Manual(tl.Start.Add(time.Hour))
	if err := replay.NewPlayer(tl, c, replay.NewWriterSink(os.Stdout, nil)).Play(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// span: 39s
	// [2025-06-14 08:12:01] Load weight begin. avail mem=78.20 GB
	// INFO:     Started server process [4242]
	// [2025-06-14 08:12:40] The server is fired up and ready to roll!
}
