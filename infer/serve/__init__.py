"""`deca serve` (infer/serve_cli.py): a trained model behind an HTTP API and a demo page.

app.py: the FastAPI app (routes, local batching backend, uvicorn); engine.py: the model loaded once and the
batching queue; schema.py: request validation and limits; examples.py: example inputs per task;
ray_app.py: the same app as a Ray Serve deployment; static/: the demo page (no build step).
"""
