"""Writes the example's corpus (documents written for this example; CC0, see README.md).

Run from this folder: python corpus.py   (the files it writes are committed; this script is how they were made)
"""

import json
from pathlib import Path

NEWS = [
    (
        "01-bridge",
        [
            "The old Mill Street bridge in Harbor Falls closed on Monday after inspectors found cracks in two of its steel beams.",
            "The bridge carries about 9,000 cars a day across the Ash River.",
            "City engineer Maria Lopez said the cracks were not an immediate danger but the bridge could not carry heavy trucks.",
            "Drivers will use the Route 4 bridge, which adds about ten minutes to a trip downtown.",
            "The city council will meet on Thursday to discuss repairing or replacing the bridge.",
            "A new bridge would cost an estimated 30 million dollars and take three years to build.",
            "Repairs would cost less but would keep the bridge closed for at least eight months.",
        ],
        [
            "The Mill Street bridge in Harbor Falls closed after inspectors found cracks in its steel beams; the council will decide whether to repair or replace it.",
            "Cracks in two beams closed the Mill Street bridge, which carries 9,000 cars a day; a new bridge would cost 30 million dollars.",
        ],
    ),
    (
        "02-library",
        [
            "The Harbor Falls public library will open on Sundays starting next month.",
            "Library director Sam Okafor said Sunday hours were the most common request in a survey of residents.",
            "More than 2,000 people answered the survey, and 70 percent asked for weekend hours.",
            "The library will pay for the new hours with a state grant of 120,000 dollars.",
            "The grant also buys new laptops that visitors can borrow inside the library.",
            "Students said the library is the only quiet place they can study on weekends.",
        ],
        [
            "The Harbor Falls library will open on Sundays, paid for by a state grant, after residents asked for weekend hours in a survey.",
            "A state grant lets the library open on Sundays and lend laptops; most survey answers asked for weekend hours.",
        ],
    ),
    (
        "03-storm",
        [
            "A strong storm hit the coast near Harbor Falls on Tuesday night.",
            "Winds of up to 90 kilometers an hour knocked down trees and power lines.",
            "About 14,000 homes lost power during the storm, most of them in the north of the city.",
            "Power crews worked through the night, and by Wednesday evening most homes had power again.",
            "Schools stayed closed on Wednesday while crews cleared fallen trees from the roads.",
            "No one was seriously hurt, the fire department said.",
            "Forecasters expect calm weather for the rest of the week.",
        ],
        [
            "A storm with strong winds knocked out power to 14,000 homes in Harbor Falls; crews restored most of it by Wednesday and schools closed for a day.",
            "Storm winds brought down trees and power lines near Harbor Falls, leaving 14,000 homes without power; no one was seriously hurt.",
        ],
    ),
    (
        "04-bakery",
        [
            "A family bakery on Grove Road is celebrating fifty years in business this week.",
            "Anna and Peter Novak opened the bakery in 1975 with one oven and a recipe for rye bread.",
            "Their daughter Eva now runs the bakery and still bakes the rye bread every morning.",
            "The bakery sells about 400 loaves a day and supplies bread to three local schools.",
            "To mark the anniversary, the bakery will give a free loaf to every customer on Saturday.",
            "Eva Novak said the secret of the bakery is that the recipe never changed.",
        ],
        [
            "The Novak family bakery on Grove Road turns fifty; Eva Novak still bakes her parents' rye bread and will give free loaves on Saturday.",
            "Opened in 1975, the Grove Road bakery sells 400 loaves a day and celebrates fifty years with free bread for customers.",
        ],
    ),
    (
        "05-election",
        [
            "Voters in Harbor Falls elected Dana Reyes as mayor on Tuesday.",
            "Reyes won 54 percent of the vote, defeating the current mayor, Tom Hale.",
            "About 61 percent of registered voters took part, the highest turnout in twenty years.",
            "Reyes promised to build more affordable housing and to fix the Mill Street bridge.",
            "Hale congratulated Reyes and said he would help with a smooth transition.",
            "Reyes will take office in January as the first woman to lead the city.",
        ],
        [
            "Dana Reyes defeated mayor Tom Hale with 54 percent of the vote and will become the first woman to lead Harbor Falls.",
            "Harbor Falls elected Dana Reyes mayor on a record turnout; she promised affordable housing and a fix for the Mill Street bridge.",
        ],
    ),
    (
        "06-marathon",
        [
            "More than 3,000 runners took part in the Harbor Falls marathon on Sunday.",
            "The race started at the harbor and followed the Ash River for most of its route.",
            "Kenji Sato won the men's race in 2 hours and 21 minutes, a new course record.",
            "Lucy Mwangi won the women's race for the second year in a row.",
            "The marathon raised 250,000 dollars for the children's hospital.",
            "Organizers said the cool weather helped runners set fast times.",
        ],
        [
            "Kenji Sato set a course record and Lucy Mwangi won again at the Harbor Falls marathon, which raised 250,000 dollars for the children's hospital.",
            "Over 3,000 runners ran the Harbor Falls marathon along the Ash River; Sato won the men's race in a record time.",
        ],
    ),
    (
        "07-school",
        [
            "The school board approved a plan to build a new high school in the east of Harbor Falls.",
            "The current high school has 1,800 students in a building designed for 1,200.",
            "The new school will have room for 1,500 students and will open in 2028.",
            "The plan costs 85 million dollars, most of it paid by a bond that voters approved last year.",
            "Parents welcomed the plan but asked the board to add a bus route to the new school.",
            "The board said it will study bus routes this spring.",
        ],
        [
            "The school board approved an 85 million dollar high school for 1,500 students to relieve the crowded current school.",
            "Harbor Falls will build a new high school, opening in 2028, because the current one holds 1,800 students in space for 1,200.",
        ],
    ),
    (
        "08-park",
        [
            "The Ash River park reopened on Saturday after a year of work.",
            "The park now has a playground, a skate area and a path along the river.",
            "Workers planted 300 trees and cleaned the river bank.",
            "The work cost 4 million dollars, paid by the city and a local foundation.",
            "Hundreds of families came to the reopening, which included music and free ice cream.",
            "The park is open every day from sunrise to ten in the evening.",
        ],
        [
            "The Ash River park reopened after a year of work with a playground, a skate area, a river path and 300 new trees.",
            "A 4 million dollar renovation of the Ash River park ended with a reopening that drew hundreds of families.",
        ],
    ),
    (
        "09-factory",
        [
            "A solar panel maker will open a factory in Harbor Falls next year.",
            "The company, Brightline, said the factory will employ about 600 people.",
            "The factory will be built on the site of an old paper mill that closed in 2009.",
            "The state will give the company a tax break of 12 million dollars over ten years.",
            "Some residents worried about traffic on the roads near the factory.",
            "The mayor said the factory is the largest new employer in the city in decades.",
        ],
        [
            "Brightline will open a solar panel factory with 600 jobs on the site of an old paper mill in Harbor Falls.",
            "A solar panel factory employing about 600 people is coming to Harbor Falls with a 12 million dollar state tax break.",
        ],
    ),
    (
        "10-ferry",
        [
            "The ferry between Harbor Falls and Gull Island will run every hour this summer.",
            "Until now the ferry ran every two hours, and boats were often full.",
            "The ferry company bought a second boat that carries 200 passengers and 40 cars.",
            "Tickets will cost the same as last year.",
            "Island shop owners said more ferries will bring more visitors.",
            "The hourly ferry starts on June 1.",
        ],
        [
            "The Harbor Falls ferry to Gull Island will run every hour this summer with a second boat, at the same ticket price.",
            "A new boat lets the Gull Island ferry run hourly from June 1 instead of every two hours.",
        ],
    ),
]

SCIENCE = [
    (
        [
            "Honeybees can learn to recognize human faces, a new study shows.",
            "Researchers trained bees to link a photograph of a face with a drop of sugar water.",
            "After training, the bees picked the rewarded face over a new face in most tests.",
            "The bees recognized the face even when it was shown at a different angle.",
            "The study suggests that face recognition does not need a large brain.",
            "A bee brain has fewer than one million neurons.",
        ],
        [
            "Bees trained with sugar water learned to recognize human faces, showing that face recognition does not need a large brain.",
            "A study found honeybees can recognize a face, even at a new angle, with a brain of under a million neurons.",
        ],
    ),
    (
        [
            "A new battery made from sodium could replace lithium batteries in some uses.",
            "Sodium is far more common than lithium and much cheaper to mine.",
            "The new battery keeps 90 percent of its capacity after 5,000 charges.",
            "It stores less energy per kilogram than lithium batteries, so it suits power grids more than phones.",
            "The team plans to test the battery at a solar farm next year.",
        ],
        [
            "A cheap sodium battery that keeps 90 percent of its capacity after 5,000 charges could replace lithium batteries on power grids.",
            "Researchers built a sodium battery that stores less energy than lithium but lasts long and costs less, suited to grid storage.",
        ],
    ),
    (
        [
            "Astronomers have found a planet the size of Earth orbiting a nearby star.",
            "The star is a red dwarf about 40 light years from the Sun.",
            "The planet orbits its star every 11 days and lies in the zone where liquid water could exist.",
            "The planet was found by measuring tiny dips in the star's light as the planet passed in front of it.",
            "The James Webb telescope will study the planet's atmosphere next year.",
            "Scientists cautioned that red dwarfs often release strong flares that could strip an atmosphere away.",
        ],
        [
            "Astronomers found an Earth-size planet in the habitable zone of a red dwarf 40 light years away; Webb will study its atmosphere.",
            "An Earth-size planet orbiting a nearby red dwarf every 11 days could have liquid water, though flares may strip its atmosphere.",
        ],
    ),
    (
        [
            "Walking 7,000 steps a day is enough to lower the risk of early death, a large study reports.",
            "Researchers followed 50,000 adults for an average of ten years.",
            "People who walked 7,000 steps a day had a 50 percent lower risk of dying early than those who walked 3,000 steps.",
            "The benefit grew little beyond 10,000 steps a day.",
            "Walking speed mattered less than the number of steps.",
        ],
        [
            "A study of 50,000 adults found that 7,000 steps a day halves the risk of early death, with little benefit beyond 10,000.",
            "Walking 7,000 steps a day lowers the risk of dying early; the number of steps matters more than walking speed.",
        ],
    ),
    (
        [
            "Coral reefs can recover from bleaching faster than expected if the water stays cool.",
            "Scientists studied reefs in the Pacific for six years after a heat wave bleached most of their coral.",
            "Where the water stayed cool, coral cover returned to its earlier level within five years.",
            "Reefs that faced a second heat wave did not recover.",
            "The researchers said cutting pollution and fishing pressure also helped reefs recover.",
        ],
        [
            "Bleached Pacific coral reefs recovered within five years where the water stayed cool, but not after a second heat wave.",
            "Coral reefs can recover from bleaching if the water stays cool and pollution and fishing are reduced.",
        ],
    ),
    (
        [
            "A new blood test can detect several types of cancer before symptoms appear.",
            "The test looks for fragments of DNA that tumors release into the blood.",
            "In a trial of 6,000 people, the test found cancer in 35 people, half of them at an early stage.",
            "The test also guessed where in the body the cancer was in most cases.",
            "Doctors warned that the test misses many early cancers and should not replace screening.",
        ],
        [
            "A blood test that looks for tumor DNA found cancers in a 6,000-person trial, half early, but misses many early cancers.",
            "A new blood test detects several cancers before symptoms from DNA fragments in the blood; doctors say it should not replace screening.",
        ],
    ),
    (
        [
            "Octopuses change color even while they sleep, researchers found.",
            "The team filmed octopuses in a lab tank through the night.",
            "During active sleep, the octopuses' skin flashed with patterns they use when awake.",
            "Active sleep came about once an hour and lasted about a minute.",
            "The scientists think octopuses may replay waking experiences, much as people dream.",
        ],
        [
            "Sleeping octopuses flash waking color patterns during short bouts of active sleep, which may be like dreaming.",
            "Filmed at night, octopuses changed color in active sleep about once an hour, perhaps replaying their day.",
        ],
    ),
    (
        [
            "Engineers have built a robot that can walk on the surface of water.",
            "The small robot copies the water strider, an insect that skates on ponds.",
            "Its thin legs use surface tension instead of floats to stay on top of the water.",
            "The robot weighs two grams and moves at half a meter per second.",
            "Such robots could one day monitor pollution in lakes and rivers.",
        ],
        [
            "A two-gram robot copied from the water strider walks on water using surface tension and could monitor lake pollution.",
            "Engineers built a water strider robot whose thin legs use surface tension to skate on water.",
        ],
    ),
    (
        [
            "Ancient wheat found in a cave is 9,000 years old, scientists say.",
            "The grains were found in a dry cave in the mountains where they were protected from rot.",
            "DNA from the grains shows an early form of bread wheat.",
            "The find suggests farmers were growing bread wheat earlier than thought.",
            "The researchers will compare the ancient DNA with modern wheat to look for lost traits such as drought resistance.",
        ],
        [
            "Wheat grains preserved in a dry cave are 9,000 years old and show bread wheat was farmed earlier than thought.",
            "Scientists found 9,000-year-old bread wheat in a cave and will compare its DNA with modern wheat to find lost traits.",
        ],
    ),
    (
        [
            "Children who read for fun score higher on tests of memory and attention, a study of 10,000 children found.",
            "The researchers compared children who began reading for pleasure early with those who began late or never did.",
            "Children who read for fun also slept more and spent less time on screens.",
            "Brain scans showed larger areas linked to language in the early readers.",
            "The authors recommend about twelve hours of reading for fun a week.",
        ],
        [
            "A study of 10,000 children found that reading for fun is linked to better memory and attention and to larger language areas in the brain.",
            "Children who read for pleasure early scored higher on memory and attention tests, slept more and used screens less.",
        ],
    ),
]


def main():
    here = Path(__file__).parent
    news = here / "data" / "news"
    (news / "inputs").mkdir(parents=True, exist_ok=True)
    (news / "gold").mkdir(parents=True, exist_ok=True)
    for name, sentences, _ in NEWS:  # one file per document, one sentence per line
        (news / "inputs" / f"{name}.txt").write_text("\n".join(sentences) + "\n", encoding="utf-8")
    (news / "gold" / "refs.jsonl").write_text(
        "".join(json.dumps({"references": refs}) + "\n" for _, _, refs in NEWS), encoding="utf-8"
    )
    science = here / "data" / "science"
    (science / "gold").mkdir(parents=True, exist_ok=True)
    # one document per line, each sentence in <s> ... </s> tags (the CNN/DailyMail convention)
    (science / "inputs.txt").write_text(
        "".join(" ".join(f"<s> {s} </s>" for s in sentences) + "\n" for sentences, _ in SCIENCE), encoding="utf-8"
    )
    # references on one line separated by |||, in the same tags
    (science / "gold" / "refs.txt").write_text(
        "".join(" ||| ".join(f"<s> {r} </s>" for r in refs) + "\n" for _, refs in SCIENCE), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
