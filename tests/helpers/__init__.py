"""What several test packages share: real servers that misbehave on purpose (blackholes,
engine_servers), a logged nginx, network-namespace machines (netns), a real sshd (sshd_server),
tools replayed from recorded output (replay), the report's data and its browser driver."""
