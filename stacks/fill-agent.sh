# Copy the metrics agent's jar from swarmkit's probe image into a node's volume <stack>_metrics-agent (run by
# `swarmkit deploy` in a one-off container of the probe image with that volume mounted), only when it differs.
# In: SWARMKIT_AGENT_SOURCE (the jar in the image), SWARMKIT_AGENT_TARGET (its path in the volume).
# Out: "written", "unchanged", or "absent" (an image without the jar: that node's Kafka runs without metrics).
src="$SWARMKIT_AGENT_SOURCE"
dst="$SWARMKIT_AGENT_TARGET"
if [ ! -r "$src" ]; then
    echo absent
elif cmp -s "$src" "$dst"; then
    echo unchanged
else
    cp "$src" "$dst.new" && chmod 644 "$dst.new" && mv "$dst.new" "$dst" && echo written
fi
