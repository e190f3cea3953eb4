"""The boundary: a scenario file read once into typed, frozen objects, every error naming its
file:line and key.

read: the Scenario and its sections; yamlread: YAML with positions; names, httpvalues: the
strict patterns a name, URL, path or header must pass; hosts: `hosts:` (the target's machine
and the generators); observation: `probe:` and `monitor:`; profiles: named overrides merged
before parsing; targets: `targets:` (the server stacks' typed specs); criteria/: pass/fail
criteria, their language, and their judgement of stored results; sysctls: the kernel settings a
scenario may ask for (what a load test needs), and the plain values they take.

May import: toolbench.errors, toolbench.record"""
