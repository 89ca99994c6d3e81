"""Stage 6, `SearchResult` -> checked, streamed `Answer`.

`service` runs a turn (rewrite, search through the `Searcher` protocol, prompt, model or
offline answer, citation check); `prompt` builds the prompt; `llm` owns the OpenAI chat
client; `extractive` is the offline answer mode (`units` cuts sources into quotable units,
`ranking` scores them); `citations` checks markers; `rewrite`
makes follow-ups standalone; `safety` neutralises model output.
"""
