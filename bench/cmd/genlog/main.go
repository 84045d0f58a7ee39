// Command genlog writes a generated SGLang log of a given size (see bench/loggen).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/incident-replay/incident-replay/bench/loggen"
	"github.com/incident-replay/incident-replay/sglang"
)

func main() {
	size := flag.Int64("mb", 500, "size in MB (1e6 bytes)")
	seed := flag.Uint64("seed", 1, "random seed")
	prof := flag.String("profile", "C", "SGLang profile (A, B, C or a version)")
	tp := flag.Int("tp", 8, "tensor-parallel ranks")
	out := flag.String("o", "", "output file (required)")
	flag.Parse()
	if err := run(*size, *seed, *prof, *tp, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genlog:", err)
		os.Exit(1)
	}
}

func run(mb int64, seed uint64, prof string, tp int, out string) error {
	if out == "" {
		return fmt.Errorf("-o is required: the file to write")
	}
	p, err := sglang.LookupProfile(prof)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if _, err := loggen.Write(context.Background(), f, loggen.Options{Bytes: mb * 1e6, Seed: seed, Profile: p, TP: tp}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
