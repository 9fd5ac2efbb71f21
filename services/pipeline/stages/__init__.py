"""The evaluation's stage families, one module each: anonymize, train, embed, score.

Each stage is a function of a :class:`~services.pipeline.stages.context.StageContext` and its
inputs; it runs through the context's ``StageRunner``, so its folder is named by the content hash
of those inputs (``services.pipeline.stage_runner``). ``services.pipeline.evaluation`` strings them
together; the corpus stage and the sets live in ``services.pipeline.sets``, the analyses in
``services.pipeline.analyses``.
"""
