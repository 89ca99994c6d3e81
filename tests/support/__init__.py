"""What tests share: fixtures' helpers, fakes, served apps, corpora (docs/architecture.md).

Start here when writing a test: `served_ui` serves the real app (`launched`,
`behind_fake_model`) or a scripted UI (`demo_launched`); `corpora.ingest_once` gives an
index of a folder from one ingest per session; `openai_server.FakeOpenAIServer` is a
scripted model; `chromium` opens Debian's chromium; `llama_server` runs the real model.
Each module's docstring says how to use it. Mark a test ``slow`` when it takes over 2 s.
"""
