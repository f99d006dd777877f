# Compare-and-write a node's identity (run by `swarmkit deploy` in a one-off container with the
# identity volume mounted): the file is replaced, atomically, only when its content differs.
# In: SWARMKIT_IDENTITY_FILE (the path), SWARMKIT_NODE_ENV (the content).
# Out: "written" (a new file), "replaced" (its content changed: the broker must restart) or "unchanged".
f="$SWARMKIT_IDENTITY_FILE"
if [ -f "$f" ] && [ "$(cat "$f")" = "$(printf '%s' "$SWARMKIT_NODE_ENV")" ]; then
    echo unchanged
    exit 0
fi
outcome=written
[ -f "$f" ] && outcome=replaced
printf '%s' "$SWARMKIT_NODE_ENV" > "$f.new" && chmod 644 "$f.new" && mv "$f.new" "$f" && echo "$outcome"
