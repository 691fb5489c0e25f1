package invoicing

import "fmt"

// SettingError is a field of a component's Config that its checks refuse
// (backend.Config.Check, events.Config.Check, ...): the component, the
// field and what it must be. Whoever loads the configuration names the
// setting in its own words (its file's key, its variable) beside Message.
type SettingError struct {
	Component string // "backend", "events"
	Field     string // the Config field: "QueryTimeout"
	Message   string // "must not be negative (zero means 2s)"
}

func (e *SettingError) Error() string {
	return e.Component + ": Config." + e.Field + " " + e.Message
}

// InvalidSetting is the field of component's Config refused, with why:
// "must be ...", formatted as fmt.Sprintf does.
func InvalidSetting(component, field, format string, a ...any) error {
	return &SettingError{Component: component, Field: field, Message: fmt.Sprintf(format, a...)}
}
