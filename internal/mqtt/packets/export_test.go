package packets

// What the tests of package packets_test use of the package's insides.
var (
	DecodeLengthBytes = decodeLengthBytes
	PropertiesBytes   = propertiesBytes
)
