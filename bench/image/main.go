// Command image builds the fakesglang image (fakeserver.BuildImage) and prints its tag.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root, err := os.Getwd()
	if err == nil {
		var tag string
		if tag, err = fakeserver.BuildImage(ctx, root); err == nil {
			fmt.Println(tag)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
