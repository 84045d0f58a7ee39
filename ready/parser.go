package ready

import "github.com/incident-replay/incident-replay/sglang"

// NewSGLangParser adapts sglang's incremental parser (which knows every era's line forms,
// wrappers and traceback blocks) to LineParser. One per stream: it keeps context between lines.
func NewSGLangParser() LineParser { return &sglangParser{p: sglang.NewParser()} }

type sglangParser struct {
	p   *sglang.Parser
	evs []sglang.Event
}

func (s *sglangParser) Feed(line string) []sglang.Event {
	s.evs = s.evs[:0]
	for _, l := range s.p.Feed(line) {
		s.evs = append(s.evs, l.Event)
	}
	return s.evs
}
