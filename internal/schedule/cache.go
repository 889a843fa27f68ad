package schedule

import "time"

// Cache loads each zone and parses each schedule once, and computes each schedule's shortest
// gap once: a large table shares a few zones and schedules among many jobs, and the jobs that
// name them share the result (a zone's transitions and a parsed schedule are read-only). It is
// not safe for concurrent use.
type Cache struct {
	now       time.Time
	gaps      map[string]gapResult
	zones     map[string]zoneResult
	schedules map[string]*Schedule // by spec and zone, the ones that parsed
}

type zoneResult struct {
	loc *time.Location
	err error
}

type gapResult struct {
	gap time.Duration
	ok  bool
}

// NewCache returns an empty Cache whose shortest gaps are those after now.
func NewCache(now time.Time) *Cache {
	return &Cache{now: now, gaps: map[string]gapResult{}, zones: map[string]zoneResult{}, schedules: map[string]*Schedule{}}
}

// Zone is time.LoadLocation(name), loaded once per name.
func (c *Cache) Zone(name string) (*time.Location, error) {
	r, ok := c.zones[name]
	if !ok {
		r.loc, r.err = time.LoadLocation(name)
		c.zones[name] = r
	}
	return r.loc, r.err
}

// Parse is Parse(spec, loc), parsed once per spec and zone; a spec that does not parse is parsed
// again each time, for its error.
func (c *Cache) Parse(spec string, loc *time.Location) (*Schedule, error) {
	key := spec + "\x00" + loc.String()
	if s, ok := c.schedules[key]; ok {
		return s, nil
	}
	s, err := Parse(spec, loc)
	if err == nil {
		c.schedules[key] = s
	}
	return s, err
}

// ShortestGap is s.ShortestGap of the Cache's now, computed once per schedule and zone.
func (c *Cache) ShortestGap(s *Schedule) (time.Duration, bool) {
	key := s.String() + "\x00" + s.Location().String()
	r, ok := c.gaps[key]
	if !ok {
		r.gap, r.ok = s.ShortestGap(c.now)
		c.gaps[key] = r
	}
	return r.gap, r.ok
}
