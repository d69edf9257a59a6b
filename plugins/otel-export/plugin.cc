// Registration only: the entry point of otel-export.so.
#include "otel_export.h"

KH_PLUGIN(kuscia_host::plugins::otel::OtelExport, "otel-export", "0.1.0",
          "sends each task's startup as an OpenTelemetry trace (OTLP/HTTP)")
