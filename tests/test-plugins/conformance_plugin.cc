// Registration only: conformance.so, the real-host half of the conformance suite.
#include "conformance.h"

KH_PLUGIN(kuscia_host::tests::Conformance, "conformance", "test",
          "exercises the host side of the ABI and reports what it saw")
