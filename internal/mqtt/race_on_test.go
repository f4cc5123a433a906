// SPDX-License-Identifier: MIT

//go:build race

package mqtt

// raceEnabled: under the race detector, sync.Pool drops and makes
// objects at random, so allocation counts mean nothing.
const raceEnabled = true
