# Sourced by bench scripts: HERALD_BIN, or the release build of `herald`
# (built here when HERALD_BIN is unset).
if [[ -z "${HERALD_BIN:-}" ]]; then
    swift build -c release --product herald >/dev/null
    HERALD_BIN=.build/release/herald
fi
