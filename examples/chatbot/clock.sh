#!/bin/sh
# The slow "service" of the example bot: the handler of :svc/time.
# aido starts it for each :svc/time launch with the request as one JSON
# object on standard input ({"request": 3, "action": ":svc/time",
# "options": {"city": "Lisbon"}, ...}); what it prints, one JSON value,
# becomes the :defer's :result. It takes its time, as a real service would.
#
#   aido chat examples/chatbot/bot.edn --handler svc/time=examples/chatbot/clock.sh
cat > /dev/null
sleep "${CLOCK_DELAY:-2}"
date -u +'"%H:%M UTC"'
