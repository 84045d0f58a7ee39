package sglang

import (
	"regexp"
	"strings"
)

// Known info messages: lines SGLang prints that change nothing a replay models (no phase, no
// state). They parse as KindInfo so that a log's unknown lines are only the ones nobody has
// read yet. Field "msg" names the message; Text is the message as printed.

// infoMessage is one known message: its id and how it opens.
type infoMessage struct {
	id     string
	prefix string         // the message starts with this
	re     *regexp.Regexp // when set, the message must also match it
}

var infoMessages = []infoMessage{
	{id: "chat_template", prefix: "Using default HuggingFace chat template with detected content format: "},
	{id: "chat_template", prefix: "Using default chat template"},
	{id: "nccl_version", prefix: "sglang is using nccl=="},
	{id: "param_count", prefix: "#parameters (analytical): "},
	{id: "weight_names", prefix: "#all_names: "},
	{id: "moe_config_fallback", prefix: "Config file not found at ", re: regexp.MustCompile(`(?i)moe|fallback`)},
	{id: "moe_config_fallback", prefix: "Using default MoE kernel config. "},
	{id: "cg_register", prefix: "Registering ", re: regexp.MustCompile(`^Registering \d+ cuda graph addresses$`)},
	{id: "pyspy", prefix: "Pyspy failed to dump PID "},
	{id: "pyspy", prefix: "Pyspy dump for PID "},
	{id: "batch_dump", prefix: "self.cur_batch"},
	{id: "debug_info", prefix: "Scheduler debug info:"},
	{id: "swa_pool", prefix: "SWAKVPool mem usage"},
	{id: "cpu_affinity", prefix: "Process ", re: regexp.MustCompile(`^Process \d+ gpu_id \d+ is running on CPUs: `)},
	{id: "zmq_publisher", prefix: "Starting ZMQ publisher thread"},
	{id: "custom_allreduce", prefix: "Setup Custom allreduce failed"},
	{id: "hicache_kernel", prefix: "Unsupported element_size = "},
	{id: "sigterm", prefix: "SIGTERM received. "},
	{id: "drain", prefix: "Gracefully exiting... "},
	{id: "drain_unhealthy", prefix: "Signal SIGTERM received while health check failed. "},
	{id: "shutdown_health", prefix: "Health check request received during shutdown. Returning 503."},
}

// knownInfo types a message that is one of infoMessages.
func knownInfo(m string) (Event, bool) {
	for _, im := range infoMessages {
		if strings.HasPrefix(m, im.prefix) && (im.re == nil || im.re.MatchString(m)) {
			return Event{Kind: KindInfo, Fields: Fields{{"msg", im.id}}, Text: m}, true
		}
	}
	return Event{}, false
}

// libraryPrints are bare lines that libraries SGLang imports print with print() or their own
// warnings helper, without any prefix; the value names the library.
var libraryPrints = map[string]string{
	"`torch_dtype` is deprecated! Use `dtype` instead!": "transformers",
	"All deep_gemm operations loaded successfully!":     "deep_gemm",
}
