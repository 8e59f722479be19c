package events

// ClockTicked is appended periodically by `lore serve` (and by sweeps) so
// that transitions caused only by time passing (decay) are seen by folds at
// a point of the log: folds evaluate them at the tick's event time, which
// keeps replays deterministic.
type ClockTicked struct{}

// ClockAggregate is the one aggregate id of clock ticks.
const ClockAggregate = "clock"

func (*ClockTicked) AggregateID() string { return ClockAggregate }

func init() {
	Register(Kind{Type: "clock.ticked/v1", Aggregate: "clock",
		Doc: "time passed: folds re-evaluate decay-driven transitions at the tick's time",
		New: func() Payload { return new(ClockTicked) }})
}
