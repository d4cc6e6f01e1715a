#!/bin/sh
# What uv's installer (cargo-dist's install.sh) does once it has its binary:
# the binary into ~/.local/bin, an `env` script there that puts that
# directory on PATH (written only when there is none), and a line sourcing
# it in the shell's start-up files. $1: where the binary is (default /tests/uv).
set -e
bin="$HOME/.local/bin"
mkdir -p "$bin"
cp "${1:-/tests/uv}" "$bin/uv.new" && chmod +x "$bin/uv.new" && mv "$bin/uv.new" "$bin/uv"
if [ ! -f "$bin/env" ]; then
  cat > "$bin/env" <<'ENV'
#!/bin/sh
# add binaries to PATH if they aren't added yet
# affix colons on either side of $PATH to simplify matching
case ":${PATH}:" in
    *:"$HOME/.local/bin":*)
        ;;
    *)
        # Prepending path in case a system-installed binary needs to be overridden
        export PATH="$HOME/.local/bin:$PATH"
        ;;
esac
ENV
fi
for rc in .profile .bashrc; do
  grep -qF '. "$HOME/.local/bin/env"' "$HOME/$rc" 2>/dev/null || printf '\n. "$HOME/.local/bin/env"\n' >> "$HOME/$rc"
done
