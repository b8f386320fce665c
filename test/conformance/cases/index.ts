// Conformance cases per `--tool-call-parser` value.

import { bareJsonCases } from './bare-json.js';
import { fam1CoderCases, fam1XmlCases } from './fam1.js';
import { fam2Cases } from './fam2.js';
import { fam3Cases } from './fam3.js';
import { fam4Cases } from './fam4.js';
import { glm4Cases } from './glm4.js';
import { harmonyCases } from './harmony.js';
import { hermesCases } from './hermes.js';
import { llama3JsonCases } from './llama3-json.js';
import { pythonicCases } from './pythonic.js';
import type { ParserCase } from './types.js';

export const CASES: Record<string, ParserCase[]> = {
  hermes: hermesCases,
  fam1_coder: fam1CoderCases,
  fam1_xml: fam1XmlCases,
  fam2: fam2Cases,
  fam3: fam3Cases,
  fam4_xml: fam4Cases,
  bare_json: bareJsonCases,
  llama3_json: llama3JsonCases,
  glm4: glm4Cases,
  pythonic: pythonicCases,
  harmony: harmonyCases,
  openai: harmonyCases,
};
