package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/incident-replay/incident-replay/gpu"
)

func init() { register(newGPUCmd) }

func newGPUCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "gpu",
		Short: "Read this host's GPUs (NVML) and list the named host profiles",
	}
	c.AddCommand(newGPUInventoryCmd(), newGPUProfileCmd(), newGPUHostsCmd())
	return c
}

func newGPUInventoryCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "inventory",
		Short: "Driver, GPUs, memory, processes holding GPU memory, and host memory facts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := gpu.Inventory(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return writeInventory(cmd.OutOrStdout(), s)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the snapshot as JSON (the GPU-lab bundle's inventory.json)")
	return c
}

func writeInventory(w io.Writer, s gpu.Snapshot) error {
	gib := func(b uint64) float64 { return float64(b) / gpu.GiB }
	fmt.Fprintf(w, "driver %s  CUDA %s  NVML %s\n", s.DriverVersion, s.CUDADriverVersion, s.NVMLVersion)
	h := s.Host
	fmt.Fprintf(w, "host: MemTotal %.2f GiB  MemAvailable %.2f GiB  cgroup v%d limit %.2f GiB  CPUs %d  /dev/shm %.2f GiB\n",
		float64(h.MemTotal)/gpu.GiB, float64(h.MemAvailable)/gpu.GiB, h.CgroupVersion, float64(h.CgroupLimit)/gpu.GiB, h.CPUs, float64(h.ShmSize)/gpu.GiB)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDX\tNAME\tCC\tARCH\tTOTAL GiB\tUSED GiB\tFREE GiB\tPCI\tUUID")
	for _, d := range s.Devices {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%s\n", d.Index, d.Name, d.ComputeCapability, d.Architecture,
			gib(d.MemoryTotal), gib(d.MemoryUsed), gib(d.MemoryFree), d.PCIBusID, d.UUID)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, d := range s.Devices {
		for _, p := range d.Processes {
			fmt.Fprintf(w, "GPU %d held by pid %d %s (%s): %.2f GiB\n", d.Index, p.PID, p.Name, p.Type, gib(p.UsedMemory))
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}

func newGPUProfileCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "profile",
		Short: "Write this host as a scenario `host:` block (YAML)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := gpu.Inventory(cmd.Context())
			if err != nil {
				return err
			}
			return writeHostBlock(cmd.OutOrStdout(), s.HostProfile())
		},
	}
}

func writeHostBlock(w io.Writer, h gpu.Host) error {
	b, err := yaml.Marshal(struct {
		Host gpu.Host `yaml:"host"`
	}{h})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func newGPUHostsCmd() *cobra.Command {
	var show string
	c := &cobra.Command{
		Use:   "hosts",
		Short: "List the named host profiles scenarios can use (host: {profile: NAME})",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if show != "" {
				h, err := gpu.LookupHost(show)
				if err != nil {
					return err
				}
				return writeHostBlock(cmd.OutOrStdout(), h)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tGPUS\tGPU GiB\tCC\tARCH\tRAM GiB\tMODEL")
			for _, n := range gpu.HostNames() {
				h, err := gpu.LookupHost(n)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%d\t%g\t%s\t%s\t%g\t%s\n", n, h.GPUCount, h.GPUMemoryGB, h.ComputeCapability, h.Architecture(), h.HostRAMGB, h.GPUModel)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&show, "show", "", "print one profile as a `host:` block")
	return c
}
