package ready

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// fakeProc builds a procfs fixture: pid → (ppid, socket inodes), plus a tcp table.
func fakeProcfs(t *testing.T, tcp string, procs map[int]struct {
	ppid   int
	inodes []string
}) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "net"), 0o755))
	must(os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(tcp), 0o644))
	for pid, p := range procs {
		dir := filepath.Join(root, strconv.Itoa(pid))
		must(os.MkdirAll(filepath.Join(dir, "fd"), 0o755))
		must(os.WriteFile(filepath.Join(dir, "stat"), []byte(fmt.Sprintf("%d (python3 -m x) S %d 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 987654 10000 200\n", pid, p.ppid)), 0o644))
		must(os.WriteFile(filepath.Join(dir, "comm"), []byte("python3\n"), 0o644))
		for i, ino := range p.inodes {
			must(os.Symlink("socket:["+ino+"]", filepath.Join(dir, "fd", strconv.Itoa(i+3))))
		}
	}
	return root
}

const tcpTable = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:7530 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 5002 1 0000000000000000 20 4 30 10 -1
   2: 00000000:7531 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5003 1 0000000000000000 100 0 0 10 0
`

func TestListenerOwnersAndTree(t *testing.T) {
	root := fakeProcfs(t, tcpTable, map[int]struct {
		ppid   int
		inodes []string
	}{
		50:  {1, nil},               // the launched server
		100: {50, []string{"5001"}}, // its child holds the 30000 listener
		200: {1, []string{"5003"}},  // someone else on 30001
	})
	owners, foreign, err := ListenerOwners(root, 30000)
	if err != nil || !slices.Equal(owners, []int{100}) || foreign != 0 {
		t.Fatalf("owners(30000) = %v, %d, %v; want [100] (the ESTABLISHED socket 5002 is not a listener)", owners, foreign, err)
	}
	if !InTree(root, 100, 50) {
		t.Error("100 is a child of 50")
	}
	if InTree(root, 200, 50) {
		t.Error("200 is not in 50's tree")
	}
	owners, _, _ = ListenerOwners(root, 30001)
	if !slices.Equal(owners, []int{200}) {
		t.Errorf("owners(30001) = %v, want [200]", owners)
	}
	if o, f, _ := ListenerOwners(root, 30002); len(o) != 0 || f != 0 {
		t.Errorf("owners(30002) = %v, %d, want none", o, f)
	}
}

func TestListenerOwnersInvisibleOwnerCountsAsForeign(t *testing.T) {
	root := fakeProcfs(t, tcpTable, nil)
	owners, foreign, err := ListenerOwners(root, 30000)
	if err != nil || len(owners) != 0 || foreign != 1 {
		t.Fatalf("= %v, %d, %v; want one listener with no visible owner", owners, foreign, err)
	}
}

func TestListenerOwnersRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no procfs")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	owners, _, err := ListenerOwners("/proc", port)
	if err != nil || !slices.Contains(owners, os.Getpid()) {
		t.Fatalf("owners(%d) = %v, %v; want this test process %d", port, owners, err, os.Getpid())
	}
}
