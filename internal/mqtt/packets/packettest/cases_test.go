// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2022 mochi-mqtt, mochi-co
// SPDX-FileContributor: mochi-co

package packettest

import (
	"testing"

	"github.com/dssio/dss/internal/mqtt/packets"
	"github.com/stretchr/testify/require"
)

func TestTPacketCaseGet(t *testing.T) {
	require.Equal(t, TPacketData[packets.Connect][1], TPacketData[packets.Connect].Get(TConnectMqtt311))
	require.Equal(t, TPacketCase{}, TPacketData[packets.Connect].Get(byte(128)))
}
