# Compare-and-write a node's identity (run by `swarmkit deploy` in a one-off container with the
# identity volume mounted): the file is replaced, atomically, only when its content differs.
# In: SWARMKIT_IDENTITY_FILE (the path), SWARMKIT_NODE_ENV (the content). Out: "written" or "unchanged".
f="$SWARMKIT_IDENTITY_FILE"
if [ -f "$f" ] && [ "$(cat "$f")" = "$(printf '%s' "$SWARMKIT_NODE_ENV")" ]; then
    echo unchanged
else
    printf '%s' "$SWARMKIT_NODE_ENV" > "$f.new" && chmod 644 "$f.new" && mv "$f.new" "$f" && echo written
fi
