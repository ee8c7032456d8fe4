//go:build !race

package scenarios

// raceDetector says the test binary was built with -race.
const raceDetector = false
