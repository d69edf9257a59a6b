// Registration only: the entry point of hello.so.
#include "hello.h"

KH_PLUGIN(kuscia_host::plugins::hello::Hello, "hello", "0.1.0",
          "heartbeat example: a periodic counter and log line")
