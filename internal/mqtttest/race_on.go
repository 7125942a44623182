//go:build race

package mqtttest

const raceEnabled = true
