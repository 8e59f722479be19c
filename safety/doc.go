// Package safety holds lore's text-safety rules: credentials (detection and
// redaction), instructions aimed at a model, and dangerous shell commands.
//
// Every rule is a pure function of its text. The knowledge validator, the
// payload hooks of the appender (redaction) and the payload checks of the
// projector (refusal of an unredacted secret) all call these functions, so
// every door applies the same rules.
package safety
