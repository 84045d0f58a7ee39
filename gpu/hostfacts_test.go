package gpu

import (
	"testing"
	"testing/fstest"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// The founding host's RAM: 449 GiB, as /proc/meminfo prints it in kB.
const foundingMeminfo = "MemTotal:       470810624 kB\nMemFree:        1000 kB\nMemAvailable:   460000000 kB\n"

func TestReadHostFacts(t *testing.T) {
	tests := []struct {
		name string
		fs   fstest.MapFS
		want HostFacts
	}{
		{
			name: "cgroup v2 container, parent limit binds",
			fs: fstest.MapFS{
				"proc/meminfo":                              file(foundingMeminfo),
				"proc/self/cgroup":                          file("0::/kubepods/pod1/c1\n"),
				"proc/mounts":                               file("shm /dev/shm tmpfs rw,nosuid,nodev,size=65536k 0 0\n"),
				"sys/fs/cgroup/cgroup.controllers":          file("cpu memory\n"),
				"sys/fs/cgroup/memory.max":                  file("max\n"),
				"sys/fs/cgroup/kubepods/pod1/memory.max":    file("274877906944\n"), // 256 GiB
				"sys/fs/cgroup/kubepods/pod1/c1/memory.max": file("max\n"),
				"sys/fs/cgroup/cpu.max":                     file("1600000 100000\n"),
				"sys/devices/system/cpu/online":             file("0-63,128-191\n"),
			},
			want: HostFacts{MemTotal: 449 * GiB, MemAvailable: 460000000 * 1024, CgroupVersion: 2,
				CgroupLimit: 256 * GiB, CPUs: 128, CPULimit: 16, ShmSize: 64 << 20},
		},
		{
			name: "cgroup v1 hybrid, unlimited, shm without size is half of RAM",
			fs: fstest.MapFS{
				"proc/meminfo":     file(foundingMeminfo),
				"proc/self/cgroup": file("4:memory:/process_api/a85d\n0::/\n"),
				"proc/mounts":      file("tmpfs /dev/shm tmpfs rw,relatime 0 0\n"),
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                  file("9223372036854771712\n"),
				"sys/fs/cgroup/memory/process_api/a85d/memory.limit_in_bytes": file("9223372036854771712\n"),
				"sys/fs/cgroup/cpu/cpu.cfs_quota_us":                          file("-1\n"),
				"sys/fs/cgroup/cpu/cpu.cfs_period_us":                         file("100000\n"),
				"sys/devices/system/cpu/online":                               file("0-1\n"),
			},
			want: HostFacts{MemTotal: 449 * GiB, MemAvailable: 460000000 * 1024, CgroupVersion: 1,
				CPUs: 2, ShmSize: 449 * GiB / 2},
		},
		{
			name: "cgroup v1 limit at the leaf, old kernel without MemAvailable",
			fs: fstest.MapFS{
				"proc/meminfo":     file("MemTotal: 1048576 kB\nMemFree: 1024 kB\nBuffers: 1024 kB\nCached: 2048 kB\n"),
				"proc/self/cgroup": file("4:memory:/docker/x\n"),
				"sys/fs/cgroup/memory/memory.limit_in_bytes":          file("9223372036854771712\n"),
				"sys/fs/cgroup/memory/docker/x/memory.limit_in_bytes": file("536870912\n"),
			},
			want: HostFacts{MemTotal: 1 << 30, MemAvailable: 4096 * 1024, CgroupVersion: 1, CgroupLimit: 512 << 20},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadHostFacts(tc.fs)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := ReadHostFacts(fstest.MapFS{}); err == nil {
		t.Error("no /proc/meminfo: want an error")
	}
}
