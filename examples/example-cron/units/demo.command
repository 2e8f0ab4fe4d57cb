# A shell line (no name.service beside the timer), run as /bin/sh -c. The runner sets, as systemd
# does for a service a timer started, TRIGGER_UNIT and TRIGGER_TIMER_REALTIME_USEC (here: the
# occurrence this run answers, in microseconds since the epoch).
echo "$TRIGGER_UNIT: occurrence $(date -u -d @$((TRIGGER_TIMER_REALTIME_USEC / 1000000)) +%T), now $(date -u +%T.%N)"
