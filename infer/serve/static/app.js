// The demo page of `deca serve`: examples from GET /tasks, answers from POST /predict, each answer token
// coloured by its source (red = context, green = question, blue = vocabulary) with its three source weights.
"use strict";

const SOURCES = ["vocabulary", "context", "question"];
const $ = (id) => document.getElementById(id);
let examples = [];

async function getJSON(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(url + ": HTTP " + response.status);
  return response.json();
}

async function loadModel() {
  try {
    const h = await getJSON("/health");
    const it = h.iteration == null ? "" : ", iteration " + h.iteration;
    $("model").textContent = "Model: " + h.checkpoint + it + " on " + h.device + " (" + h.serving + ")";
  } catch (err) {
    $("model").textContent = "The service does not answer: " + err.message;
  }
}

async function loadTasks() {
  const select = $("task");
  try {
    examples = (await getJSON("/tasks")).tasks;
  } catch (err) {
    showError("Could not load the examples: " + err.message);
    return;
  }
  for (const [i, ex] of examples.entries()) {
    const option = document.createElement("option");
    option.value = String(i);
    option.textContent = ex.task + " \u2014 " + ex.description;
    select.appendChild(option);
  }
}

function pickExample() {
  const ex = examples[Number($("task").value)];
  if ($("task").value === "" || !ex) {
    $("expected").textContent = "";
    return;
  }
  $("context").value = ex.context;
  $("question").value = ex.question;
  $("expected").textContent = "A well-trained model answers: " + ex.expected;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = false;
}

function tokenElement(step) {
  const el = document.createElement("span");
  el.className = "token " + step.source;
  el.dataset.source = step.source;
  const w = step.weights;
  el.title = "source: " + step.source + "\n" +
    SOURCES.map((s) => s + " weight " + w[s].toFixed(3)).join("\n") +
    "\nprobability " + step.probability.toFixed(3);
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = step.token;
  const bar = document.createElement("span");
  bar.className = "bar";
  for (const s of ["context", "question", "vocabulary"]) {
    const part = document.createElement("span");
    part.className = s;
    part.style.width = (100 * w[s]).toFixed(2) + "%";
    bar.appendChild(part);
  }
  el.append(text, bar);
  return el;
}

function showAnswer(answer) {
  const box = $("answer");
  box.replaceChildren(...answer.tokens.map(tokenElement));
  if (answer.tokens.length === 0) box.textContent = "(an empty answer)";
  box.dataset.answer = answer.answer;
}

async function ask(event) {
  event.preventDefault();
  $("error").hidden = true;
  $("ask").disabled = true;
  $("time").textContent = "";
  const started = performance.now();
  try {
    const response = await fetch("/predict", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({context: $("context").value, question: $("question").value}),
    });
    const body = await response.json();
    const took = performance.now() - started;
    if (!response.ok) {
      $("answer").replaceChildren();
      showError(body.error || ("HTTP " + response.status));
      return;
    }
    showAnswer(body);
    const server = response.headers.get("X-Elapsed-Ms");
    $("time").textContent = "in " + took.toFixed(0) + " ms" + (server ? " (server " + Number(server).toFixed(0) + " ms)" : "");
  } catch (err) {
    showError("The request failed: " + err.message);
  } finally {
    $("ask").disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("task").addEventListener("change", pickExample);
  $("ask-form").addEventListener("submit", ask);
  loadModel();
  loadTasks();
});
